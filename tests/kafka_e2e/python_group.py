#!/usr/bin/python3
"""Python Kafka clients against rdmq's Kafka listener (run by tests/kafka_e2e/python_test.cc).

  python_group.py --client confluent|kafka-python --bootstrap HOST:PORT --topic T --partitions N

Produces keyed records with the client's producer, then consumes them in a consumer group of two
members that commit every record synchronously (a record counts once its commit succeeded); a
third member joins half way (a rebalance) while more records are produced. Checks that every
record was produced once (delivery reports), consumed and committed exactly once, in offset order
per partition and member, and that the third member got partitions. Prints a summary line and
exits 0, or prints what went wrong and exits 1.
"""
import argparse
import sys
import threading
import time

RECORDS_PER_ROUND = 1500
DEADLINE_S = 90


def confluent_client(bootstrap):
    import confluent_kafka as ck

    class Producer:
        def __init__(self):
            self.p = ck.Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
            self.failed = []

        def send(self, topic, key, value):
            def report(err, msg):
                if err is not None:
                    self.failed.append(str(err))
            while True:
                try:
                    self.p.produce(topic, key=key, value=value, on_delivery=report)
                    break
                except BufferError:
                    self.p.poll(0.05)
            self.p.poll(0)

        def flush(self):
            left = self.p.flush(60)
            return left == 0 and not self.failed

    class Member:
        def __init__(self, group, topic):
            self.c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                                  "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
                                  "heartbeat.interval.ms": 500})
            self.c.subscribe([topic])

        def poll(self):
            m = self.c.poll(0.2)
            if m is None or m.error() is not None:
                return []
            return [(m.topic(), m.partition(), m.offset(), m.value())]

        def commit(self, topic, partition, offset):
            try:
                out = self.c.commit(offsets=[ck.TopicPartition(topic, partition, offset + 1)], asynchronous=False)
                return all(tp.error is None for tp in out)
            except ck.KafkaException:
                return False

        def seek(self, topic, partition, offset):
            try:
                self.c.seek(ck.TopicPartition(topic, partition, offset))
            except ck.KafkaException:
                pass  # no longer ours: its next owner reads it from the committed offset

        def assigned(self):
            return [tp.partition for tp in self.c.assignment()]

        def close(self):
            self.c.close()

    return Producer, Member


def kafka_python_client(bootstrap):
    import kafka
    from kafka.structs import OffsetAndMetadata, TopicPartition

    class Producer:
        def __init__(self):
            self.p = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
            self.futures = []

        def send(self, topic, key, value):
            self.futures.append(self.p.send(topic, key=key, value=value))

        def flush(self):
            self.p.flush(60)
            ok = True
            for f in self.futures:
                try:
                    f.get(timeout=60)
                except Exception as e:  # noqa: BLE001 - any failure fails the test
                    print("delivery failed:", e, file=sys.stderr)
                    ok = False
            self.futures = []
            return ok

    class Member:
        def __init__(self, group, topic):
            self.c = kafka.KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                                         enable_auto_commit=False, auto_offset_reset="earliest",
                                         session_timeout_ms=6000, heartbeat_interval_ms=500)

        def poll(self):
            out = []
            for tp, records in self.c.poll(timeout_ms=200).items():
                for r in records:
                    out.append((tp.topic, tp.partition, r.offset, r.value))
            return out

        def commit(self, topic, partition, offset):
            try:
                self.c.commit({TopicPartition(topic, partition): OffsetAndMetadata(offset + 1, None)})
                return True
            except Exception:  # noqa: BLE001 - CommitFailedError and friends: not committed
                return False

        def seek(self, topic, partition, offset):
            try:
                self.c.seek(TopicPartition(topic, partition), offset)
            except Exception:  # noqa: BLE001 - no longer assigned to this member
                pass

        def assigned(self):
            return [tp.partition for tp in self.c.assignment()]

        def close(self):
            self.c.close()

    return Producer, Member


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--client", required=True, choices=["confluent", "kafka-python"])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--partitions", type=int, required=True)
    a = ap.parse_args()
    Producer, Member = (confluent_client if a.client == "confluent" else kafka_python_client)(a.bootstrap)

    producer = Producer()
    sent = 0

    def produce_round():
        nonlocal sent
        for _ in range(RECORDS_PER_ROUND):
            producer.send(a.topic, ("k%d" % (sent % 16)).encode(), ("v%d" % sent).encode())
            sent += 1
        return producer.flush()

    if not produce_round():
        print("FAIL: the first round was not delivered", file=sys.stderr)
        return 1

    lock = threading.Lock()
    committed = {}  # (partition, offset) -> member
    problems = []
    stop = threading.Event()
    assigned_to_third = []

    def run_member(name):
        m = Member("py-" + a.client, a.topic)
        last = {}
        try:
            while not stop.is_set():
                for topic, partition, offset, _value in m.poll():
                    if partition in last and offset <= last[partition]:
                        with lock:
                            problems.append("%s read partition %d offset %d after %d" % (name, partition, offset,
                                                                                       last[partition]))
                    if not m.commit(topic, partition, offset):
                        m.seek(topic, partition, offset)  # read it again, unless it moved away
                        break
                    last[partition] = offset
                    with lock:
                        if (partition, offset) in committed:
                            problems.append("offset %d of partition %d committed twice" % (offset, partition))
                        committed[(partition, offset)] = name
                if name == "third":
                    parts = m.assigned()
                    if parts:
                        assigned_to_third[:] = parts
        finally:
            m.close()

    threads = [threading.Thread(target=run_member, args=(n,)) for n in ("first", "second")]
    for t in threads:
        t.start()
    deadline = time.time() + DEADLINE_S
    while time.time() < deadline:
        with lock:
            if len(committed) >= RECORDS_PER_ROUND // 2:
                break
        time.sleep(0.05)
    third = threading.Thread(target=run_member, args=("third",))
    third.start()
    threads.append(third)
    if not produce_round():
        problems.append("the second round was not delivered")
    while time.time() < deadline:
        with lock:
            if len(committed) >= sent:
                break
        time.sleep(0.1)
    # Let the group settle with all three before stopping.
    while time.time() < deadline and not assigned_to_third:
        time.sleep(0.1)
    stop.set()
    for t in threads:
        t.join(30)

    per_partition = {}
    for (p, o) in committed:
        per_partition.setdefault(p, set()).add(o)
    total = sum(len(v) for v in per_partition.values())
    for p, offs in per_partition.items():
        if offs != set(range(len(offs))):
            problems.append("partition %d: committed offsets are not 0..%d" % (p, len(offs) - 1))
    if total != sent:
        problems.append("%d of %d records committed" % (total, sent))
    if not assigned_to_third:
        problems.append("the third member never got a partition")
    by = {}
    for name in committed.values():
        by[name] = by.get(name, 0) + 1
    print("client %s: sent %d, committed %d (%s), third member's partitions %s" %
          (a.client, sent, total, ", ".join("%s %d" % kv for kv in sorted(by.items())), sorted(assigned_to_third)))
    for p in problems[:20]:
        print("FAIL:", p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
