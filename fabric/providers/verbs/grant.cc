// Grants on the verbs provider are type-2 memory windows: allocated, bound with IBV_WR_BIND_MW on
// the endpoint's QP (so that only its peer can use the rkey), invalidated with IBV_WR_LOCAL_INV
// on Revoke. Each window is bound to an MR of exactly the granted bytes: some devices (rdma_rxe
// in Linux 6.1) check an access through a window against the window's MR, not the window.
#include "cm.h"
#include "endpoint.h"

namespace rdmq::fabric::internal {
namespace {

class VerbsGrant final : public Grant {
 public:
  VerbsGrant(std::shared_ptr<VerbsCore> fab, std::shared_ptr<VerbsEpCore> ep, MrPtr mr, MwPtr mw,
             RegionDescriptor d)
      : fab_(std::move(fab)),
        ep_(std::move(ep)),
        mr_(std::move(mr)),
        mw_(std::move(mw)),
        desc_(std::move(d)) {}
  ~VerbsGrant() override {
    (void)Revoke();
    mw_.reset();  // deallocating a window also invalidates it
  }
  VerbsGrant(const VerbsGrant&) = delete;
  VerbsGrant& operator=(const VerbsGrant&) = delete;
  const RegionDescriptor& descriptor() const noexcept override { return desc_; }
  Status Revoke() override {
    if (revoked_) return Status::Ok();
    revoked_ = true;
    ibv_send_wr wr{};
    wr.opcode = IBV_WR_LOCAL_INV;
    wr.invalidate_rkey = static_cast<uint32_t>(desc_.key);
    Status s = ep_->RunInternal(wr, "invalidate memory window");
    if (!s.ok() && ep_->CheckUsable().ok()) return s;
    // The connection is gone or failed: its QP can no longer use the window; free it now.
    if (!s.ok()) mw_.reset();
    return Status::Ok();
  }

 private:
  std::shared_ptr<VerbsCore> fab_;
  std::shared_ptr<VerbsEpCore> ep_;
  MrPtr mr_;  // declared before mw_: the window goes first
  MwPtr mw_;
  RegionDescriptor desc_;
  bool revoked_ = false;
};

}  // namespace

Result<std::unique_ptr<Grant>> VerbsEpCore::GrantAccess(const std::shared_ptr<VerbsCore>& fab, Region& region,
                                                        uint64_t offset, uint64_t length, uint32_t access) {
  RDMQ_ASSIGN_OR_RETURN(VerbsRegion * r,
                        GrantableRegion<VerbsRegion>(region, fab.get(), offset, length, access, "verbs"));
  if (!fab->has_mw) {
    return Status(Errc::kUnsupported, "device " + fab->device_name + " has no type-2 memory windows");
  }
  RDMQ_ASSIGN_OR_RETURN(MrPtr window_mr, fab->RegisterMr(r->data() + offset, length, access, -1, true));
  MwPtr mw(ibv_alloc_mw(fab->pd.get(), IBV_MW_TYPE_2));
  if (!mw) return CmError("ibv_alloc_mw(type 2) on " + fab->device_name);
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_BIND_MW;
  wr.bind_mw.mw = mw.get();
  wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
  wr.bind_mw.bind_info.mr = window_mr.get();
  wr.bind_mw.bind_info.addr = reinterpret_cast<uint64_t>(r->data()) + offset;
  wr.bind_mw.bind_info.length = length;
  wr.bind_mw.bind_info.mw_access_flags = static_cast<unsigned>(ToIbvAccess(access) & ~IBV_ACCESS_LOCAL_WRITE);
  const uint32_t rkey = wr.bind_mw.rkey;
  RDMQ_RETURN_IF_ERROR(RunInternal(wr, "bind memory window"));
  return std::unique_ptr<Grant>(new VerbsGrant(fab, shared_from_this(), std::move(window_mr), std::move(mw),
                                               r->Describe(rkey, offset, length, access)));
}

}  // namespace rdmq::fabric::internal
