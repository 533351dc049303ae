// Owner of a PJRT_Event.
#ifndef REFIMPL_NATIVE_EVENT_H_
#define REFIMPL_NATIVE_EVENT_H_

#include "pjrt_abi.h"

namespace refimpl {

class Event {
 public:
  Event(const PJRT_Api* api, PJRT_Event* event) : api_(api), event_(event) {}
  ~Event();
  Event(Event&& other) noexcept : api_(other.api_), event_(other.event_) { other.event_ = nullptr; }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event& operator=(Event&&) = delete;

  // Blocks until the event is ready; throws PjrtError if it carries an error.
  // A null event counts as already complete.
  void Await(const char* what) const;

 private:
  const PJRT_Api* api_;
  PJRT_Event* event_;
};

}  // namespace refimpl

#endif  // REFIMPL_NATIVE_EVENT_H_
