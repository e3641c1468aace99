// Package exec is the exec task driver: it runs a command as a host
// process, like raw_exec, but isolated where the kernel lets it.
//
// What an isolated task gets (Linux, as root):
//
//   - a cgroup of its own (v1: under <root>/cpu/drover and
//     <root>/memory/drover; v2: under <root>/drover) with cpu.shares
//     (v2 cpu.weight) from Resources.Cpu.CpuShares and a hard memory
//     limit from Resources.Memory.MemoryMB, swap included. The task's
//     processes are in it before any user code runs. When the kernel's
//     OOM killer kills a process of the cgroup, the exit result says
//     OOMKilled. The cgroup is removed on Destroy.
//   - a PID namespace: the task sees only its own processes, under a
//     small init of the driver's (PID 1) that runs the command (a low PID);
//     /proc is remounted so ps and /proc agree. When the command exits,
//     everything else in the namespace is killed.
//   - a mount namespace with every mount made private: mounts made
//     inside do not reach the host and later host mounts do not appear.
//   - the task dir as working directory, and exactly TaskConfig.Env
//     (plus PATH and HOME defaults) as environment.
//
// What it does not get: no chroot or pivot_root (there is no rootfs to
// populate), so the host filesystem is visible and writable as the
// agent's user (root); no user or network namespace; no device cgroup,
// so assigned GPUs (TaskConfig.DeviceIDs) are not enforced at the device
// level (simulated GPUs have no /dev/nvidia* nodes to guard anyway).
//
// Where isolation is impossible (cgroups not writable, namespaces
// refused) the driver is not healthy and Start fails with "exec driver:
// isolation unavailable: <reason>", unless Config.AllowFallback is set:
// then tasks run like raw_exec (process group only) and Fingerprint and
// the task handle's State["isolation"] say so.
//
// Exec sessions (drivers.Execer, `alloc exec`) of an isolated task are
// started by the task's init, so the command is inside the task's PID and
// mount namespaces and its cgroup (the task's limits count it), runs as
// the task's user with the task's environment and dir, and is looked up
// in the task's PATH as the task sees the filesystem; the agent never
// enters the namespaces itself (setns of a mount namespace is refused to
// a multithreaded Go process). See execinit_linux.go. A fallback task's
// sessions run like raw_exec's, as the task does. A session's command
// has a process group of its own: what it leaves there dies when it
// exits, and all of it when the caller's ctx ends or the task ends.
//
// The init is this binary itself: Start runs /proc/self/exe with an
// environment marker that the package's init function recognises, so any
// binary that builds the driver can run its tasks (see init_linux.go).
//
// Driver config, as raw_exec:
//
//	command = "/bin/sh"            # required; looked up in the task's PATH when it has no "/"
//	args    = ["-c", "echo hi"]    # optional list of strings
//
// It must not decide restarts or know about allocations: see package
// drivers.
package exec
