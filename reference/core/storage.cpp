#include "reference/core/storage.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "reference/core/error.hpp"

namespace rcts {

namespace {
constexpr std::align_val_t kAlign{64};
std::atomic<uint64_t> next_id{1};

std::byte* alloc_bytes(int64_t n, bool zero) {
  auto* p = static_cast<std::byte*>(::operator new(static_cast<size_t>(n > 0 ? n : 1), kAlign));
  if (zero) std::memset(p, 0, static_cast<size_t>(n > 0 ? n : 1));
  else if (poison_uninitialized_enabled()) std::memset(p, 0xFF, static_cast<size_t>(n > 0 ? n : 1));
  return p;
}
}  // namespace

bool poison_uninitialized_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("RCTS_POISON_UNINITIALIZED");
    return v && *v && *v != '0';
  }();
  return on;
}

void Storage::Free::operator()(std::byte* p) const { ::operator delete(p, kAlign); }

std::shared_ptr<Storage> Storage::allocate(MemoryTracker* tracker, Domain domain, Category category,
                                           int64_t bytes, std::string name, bool zero) {
  RCTS_CHECK(bytes >= 0, "negative allocation of " + std::to_string(bytes) + " bytes for '" + name + "'");
  if (tracker) tracker->on_alloc(domain, category, bytes);
  std::shared_ptr<Storage> s(new Storage());
  s->bytes_.reset(alloc_bytes(bytes, zero));
  s->nbytes_ = bytes;
  s->tracker_ = tracker;
  s->domain_ = domain;
  s->category_ = category;
  s->id_ = next_id.fetch_add(1, std::memory_order_relaxed);
  s->name_ = std::move(name);
  return s;
}

Storage::~Storage() {
  if (bytes_ && tracker_) tracker_->on_free(domain_, category_, nbytes_);
}

std::byte* Storage::data(const std::string& reader) {
  if (!bytes_)
    throw Error("tensor '" + reader + "' read its storage '" + name_ + "' (" + std::to_string(nbytes_) +
                " bytes, " + std::string(domain_name(domain_)) + ") after it was released");
  return bytes_.get();
}

const std::byte* Storage::data(const std::string& reader) const {
  return const_cast<Storage*>(this)->data(reader);
}

void Storage::release() {
  if (!bytes_) return;
  std::memset(bytes_.get(), 0xFF, static_cast<size_t>(nbytes_));
  bytes_.reset();
  if (tracker_) tracker_->on_free(domain_, category_, nbytes_);
}

void Storage::adopt(Storage& donor) {
  RCTS_CHECK(donor.nbytes_ == nbytes_, "adopt: storage '" + name_ + "' has " + std::to_string(nbytes_) +
                                           " bytes but the donor '" + donor.name_ + "' has " +
                                           std::to_string(donor.nbytes_));
  RCTS_CHECK(donor.bytes_, "adopt: donor storage '" + donor.name_ + "' is released");
  RCTS_CHECK(donor.domain_ == domain_, "adopt: storage '" + name_ + "' and donor '" + donor.name_ +
                                           "' live in different memory domains");
  release();
  // The donor's accounted bytes move here: re-tag them to this storage's category.
  if (donor.tracker_) donor.tracker_->on_free(donor.domain_, donor.category_, donor.nbytes_);
  if (tracker_) tracker_->on_alloc(domain_, category_, nbytes_);
  bytes_ = std::move(donor.bytes_);
}

void Storage::retag(Category c) {
  if (c == category_) return;
  if (bytes_ && tracker_) tracker_->on_retag(domain_, category_, c, nbytes_);
  category_ = c;
}

}  // namespace rcts
