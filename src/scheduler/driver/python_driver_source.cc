// The in-box Python driver's source: src/inbox/python_driver.py, embedded at build time
// (python_driver.h has the wire). A std::string once, as its callers concatenate it.
#include "scheduler/driver/python_driver.h"

#include "inbox/inbox_sources.h"

namespace lsb::sched {

const std::string& PythonDriverSource() {
  static const std::string s(inbox::PythonDriverSource());
  return s;
}

}  // namespace lsb::sched
