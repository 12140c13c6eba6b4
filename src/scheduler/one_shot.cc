#include "scheduler/one_shot.h"

#include "scheduler/native_pool.h"
#include "scheduler/python_driver.h"

namespace lsb::sched {

Result<ExecResult> RunOneShot(Backend& backend, BoxRegistry& registry, const Policy& policy,
                              const ExecRequest& req, const std::vector<InputFile>& files,
                              const RunCallbacks& cb) {
  // A warm box when the daemon keeps a pool (used boxes are torn down behind, by its reaper).
  LSB_ASSIGN_OR_RETURN(auto session, AcquireOneShotBox(registry, backend, policy));
  BoxRegistry::Lease lease(registry, session.get());
  if (!files.empty()) {
    LSB_ASSIGN_OR_RETURN(auto driver, PythonDriver::Start(*session, 60000));
    for (const auto& f : files) {
      LSB_ASSIGN_OR_RETURN(FileOpResult w, driver->WriteFile(f.path, f.data));
      if (w.status != FileOpStatus::kOk)
        return Error{"files: cannot write " + f.path + " in the box: " + w.message};
    }
    driver->Stop();
    if (!session->usable()) return Error{"the box broke while the input files were written"};
  }
  auto r = session->Run(req, cb);
  if (r.ok()) r->backend = backend.name();
  return r;
}

}  // namespace lsb::sched
