#!/usr/bin/env python3
"""A Kafka client producing for the multi-node tests (tests/cluster/cluster_netns_test.cc).

Sends the values w-<first> .. w-<first + count - 1> to one partition with acks=all and an
idempotent producer (python3-confluent-kafka, librdkafka underneath: it finds the partition's
leader and follows it when it moves), and prints "<offset> <value>" for every record the cluster
acknowledged, in the order the acknowledgements came; failures go to standard error.

    acks_all_producer.py BOOTSTRAP TOPIC PARTITION FIRST COUNT
"""
import sys

from confluent_kafka import Producer


def main() -> int:
    if len(sys.argv) != 6:
        print(__doc__, file=sys.stderr)
        return 2
    bootstrap, topic = sys.argv[1], sys.argv[2]
    partition, first, count = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    producer = Producer({
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "enable.idempotence": True,
        "message.timeout.ms": 8000,
        "request.timeout.ms": 3000,
        "retry.backoff.ms": 100,
        "topic.metadata.refresh.interval.ms": 1000,
        "linger.ms": 2,
    })
    failed = 0

    def report(err, msg):
        nonlocal failed
        if err is None:
            print(msg.offset(), msg.value().decode(), flush=True)
        else:
            failed += 1
            print("not acknowledged:", msg.value().decode(), err, file=sys.stderr, flush=True)

    for i in range(first, first + count):
        producer.produce(topic, value=("w-%d" % i).encode(), partition=partition, on_delivery=report)
        producer.poll(0)
    left = producer.flush(20)
    if left:
        print("%d records still unanswered at exit" % left, file=sys.stderr)
    return 0 if failed == 0 and left == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
