// RAII owners of the rdma-core objects the verbs provider creates, one per kind, so that every
// step of a setup that fails part-way unwinds by itself.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <memory>

namespace rdmq::fabric::internal {

// A deleter that hands the pointer to rdma-core's destroy function `Destroy`.
template <auto Destroy>
struct Destroyer {
  template <class T>
  void operator()(T* p) const noexcept {
    Destroy(p);
  }
};

// ibv_dealloc_mw is static inline in <infiniband/verbs.h>; this one has external linkage, so
// that MwPtr is the same type in every file.
inline int DeallocMw(ibv_mw* mw) { return ibv_dealloc_mw(mw); }
// An rdma_cm id and the QP created on it.
inline void DestroyCmId(rdma_cm_id* id) {
  if (id->qp != nullptr) rdma_destroy_qp(id);
  rdma_destroy_id(id);
}

using PdPtr = std::unique_ptr<ibv_pd, Destroyer<&ibv_dealloc_pd>>;
using MrPtr = std::unique_ptr<ibv_mr, Destroyer<&ibv_dereg_mr>>;
using MwPtr = std::unique_ptr<ibv_mw, Destroyer<&DeallocMw>>;
using CqPtr = std::unique_ptr<ibv_cq, Destroyer<&ibv_destroy_cq>>;
using CompChannelPtr = std::unique_ptr<ibv_comp_channel, Destroyer<&ibv_destroy_comp_channel>>;
using CmChannelPtr = std::unique_ptr<rdma_event_channel, Destroyer<&rdma_destroy_event_channel>>;
using CmIdPtr = std::unique_ptr<rdma_cm_id, Destroyer<&DestroyCmId>>;  // also destroys its QP
using DeviceListPtr = std::unique_ptr<ibv_context*, Destroyer<&rdma_free_devices>>;

}  // namespace rdmq::fabric::internal
