#include "event.h"

#include "errors.h"
#include "pjrt_args.h"

namespace refimpl {

Event::~Event() {
  if (event_ == nullptr) return;
  auto args = MakeArgs<PJRT_Event_Destroy_Args>();
  args.event = event_;
  // Destroy cannot be reported from a destructor; release the error object.
  ErrorPtr ignored(api_->PJRT_Event_Destroy(&args), ErrorDeleter{api_});
}

void Event::Await(const char* what) const {
  if (event_ == nullptr) return;
  auto args = MakeArgs<PJRT_Event_Await_Args>();
  args.event = event_;
  CheckPjrt(api_, api_->PJRT_Event_Await(&args), what);
}

}  // namespace refimpl
