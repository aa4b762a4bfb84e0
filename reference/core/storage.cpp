#include "reference/core/storage.hpp"

#include <atomic>
#include <cstdlib>

#include "reference/core/error.hpp"

namespace rcts {

namespace {
std::atomic<uint64_t> next_id{1};
}  // namespace

bool poison_uninitialized_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("RCTS_POISON_UNINITIALIZED");
    return v && *v && *v != '0';
  }();
  return on;
}

std::shared_ptr<Storage> Storage::allocate(MemoryTracker* tracker, MemoryResource& memory, Domain domain,
                                           Category category, int64_t bytes, std::string name, bool zero) {
  RCTS_CHECK(bytes >= 0, "negative allocation of " + std::to_string(bytes) + " bytes for '" + name + "'");
  if (tracker) tracker->on_alloc(domain, category, bytes);
  std::shared_ptr<Storage> s(new Storage());
  s->memory_ = &memory;
  s->domain_ = domain;
  s->category_ = category;
  s->nbytes_ = bytes;
  s->name_ = std::move(name);
  try {
    s->bytes_ = memory.allocate(domain, bytes);
  } catch (...) {
    if (tracker) tracker->on_free(domain, category, bytes);
    throw;
  }
  s->tracker_ = tracker;  // from here on the destructor undoes the accounting
  if (zero) memory.fill(domain, s->bytes_, 0, bytes);
  else if (poison_uninitialized_enabled()) memory.fill(domain, s->bytes_, 0xFF, bytes);
  s->id_ = next_id.fetch_add(1, std::memory_order_relaxed);
  return s;
}

void Storage::free_bytes() noexcept {
  if (bytes_) memory_->deallocate(domain_, bytes_, nbytes_);
  bytes_ = nullptr;
}

Storage::~Storage() {
  if (bytes_ && tracker_) tracker_->on_free(domain_, category_, nbytes_);
  free_bytes();
}

std::byte* Storage::data(const std::string& reader) {
  if (!bytes_)
    throw Error("tensor '" + reader + "' read its storage '" + name_ + "' (" + std::to_string(nbytes_) +
                " bytes, " + std::string(domain_name(domain_)) + ") after it was released");
  return bytes_;
}

const std::byte* Storage::data(const std::string& reader) const {
  return const_cast<Storage*>(this)->data(reader);
}

void Storage::copy_from(const Storage& src) {
  RCTS_CHECK(src.nbytes_ == nbytes_, "copy into storage '" + name_ + "' (" + std::to_string(nbytes_) +
                                         " bytes) from '" + src.name_ + "' (" + std::to_string(src.nbytes_) + " bytes)");
  copy_bytes(data(name_), *this, src.data(name_), src, nbytes_);
}

void Storage::release() {
  if (!bytes_) return;
  memory_->fill(domain_, bytes_, 0xFF, nbytes_);
  free_bytes();
  if (tracker_) tracker_->on_free(domain_, category_, nbytes_);
}

void Storage::adopt(Storage& donor) {
  RCTS_CHECK(donor.nbytes_ == nbytes_, "adopt: storage '" + name_ + "' has " + std::to_string(nbytes_) +
                                           " bytes but the donor '" + donor.name_ + "' has " +
                                           std::to_string(donor.nbytes_));
  RCTS_CHECK(donor.bytes_, "adopt: donor storage '" + donor.name_ + "' is released");
  RCTS_CHECK(donor.domain_ == domain_ && donor.memory_ == memory_,
             "adopt: storage '" + name_ + "' and donor '" + donor.name_ + "' live in different memory domains");
  release();
  // The donor's accounted bytes move here: re-tag them to this storage's category.
  if (donor.tracker_) donor.tracker_->on_free(donor.domain_, donor.category_, donor.nbytes_);
  if (tracker_) tracker_->on_alloc(domain_, category_, nbytes_);
  bytes_ = donor.bytes_;
  donor.bytes_ = nullptr;
}

void Storage::retag(Category c) {
  if (c == category_) return;
  if (bytes_ && tracker_) tracker_->on_retag(domain_, category_, c, nbytes_);
  category_ = c;
}

void copy_bytes(std::byte* dst, const Storage& dst_storage, const std::byte* src, const Storage& src_storage,
                int64_t bytes) {
  // The copy runs on whichever side is not plain host memory (a device's resource knows
  // how to reach the host; the heap does not know the device).
  MemoryResource& via = dst_storage.host_accessible() ? src_storage.memory() : dst_storage.memory();
  via.copy(dst, dst_storage.domain(), src, src_storage.domain(), bytes);
}

}  // namespace rcts
