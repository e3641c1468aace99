// Package exec is the exec task driver: it runs a command as a host
// process, like raw_exec, but isolated where the kernel lets it.
//
// What an isolated task gets (Linux, as root):
//
//   - a cgroup of its own (v1: under <root>/cpu/drover,
//     <root>/devices/drover and <root>/memory/drover; v2: under <root>/drover) with cpu.shares
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
//   - a root of its own (pivot_root; see root_linux.go): the chroot env
//     (Config.ChrootEnv, by default Nomad's /bin /etc /lib /lib32 /lib64
//     /run/resolvconf /sbin /usr) read-only, with /etc/shadow,
//     /etc/gshadow, /etc/sudoers, /etc/ssh and the like masked; a /dev
//     of null, zero, full, random, urandom, tty, its own pts and shm plus
//     its GPUs' nodes; /proc, a read-only /sys, a /tmp of its own; and
//     its task dir, the alloc dir (TaskConfig.AllocDir) and, for an MPS
//     slice, its daemon's pipe dir (CUDA_MPS_PIPE_DIRECTORY) read-write
//     at their host paths. No other host path is reachable.
//   - a device filter on its cgroup (v1 devices.deny/allow; v2 an eBPF
//     program): only the standard devices, terminals, and the NVIDIA
//     nodes of its assigned GPUs (TaskConfig.DeviceIDs, mapped to
//     /dev/nvidia<minor> through /proc/driver/nvidia) with
//     /dev/nvidiactl and /dev/nvidia-uvm*. MIG instances get no nodes.
//   - its user: TaskConfig.User, or nobody (package drivers/taskuser);
//     the init drops to it, with its groups, after building the root.
//     The task dir is made the user's.
//   - the task dir as working directory, and exactly TaskConfig.Env
//     (plus PATH and HOME defaults) as environment. The command is found
//     in the task's root, not the host's.
//
// What it does not get: no user or network namespace (a task allowed to
// run as root is root, on the host's network); submounts of the chroot env's host dirs keep
// their own flags (a read-write mount under /etc stays read-write).

// Where isolation is impossible (cgroups not writable, namespaces or
// pivot_root refused) the driver is not healthy and Start fails with "exec driver:
// isolation unavailable: <reason>", unless Config.AllowFallback is set:
// then tasks run like raw_exec (process group only, as their user, with
// the host's filesystem) and Fingerprint and the task handle's
// State["isolation"] say so.
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
// Tasks outlive the agent (recover_linux.go). The init is not tied to
// the agent's life: when the agent dies (kill -9 included) the task
// runs on, and the init writes the command's exit status to a file
// beside the task dir (in the alloc dir, which the task's user cannot
// write), through a dir fd it got before pivot_root. Before anything
// runs in the task's cgroup the driver notes the task (ID, cgroup,
// then the init's PID and start time) in a pid file there too. A
// restarted agent re-attaches with RecoverTask from the handle's State
// ("pid", "init_start", "boot_id", "status_file", "pid_file",
// "cgroup_dirs", "exec_socket", "isolation"): it polls the init, named
// by PID, start time and boot so a reused PID is never taken for it,
// until the status file appears, and
// it can signal, stop and destroy the task. The cgroup is the ground
// truth for what still runs: Destroy, KillTask (drivers.TaskKiller: a
// handle that cannot be re-attached) and KillOrphans
// (drivers.OrphanKiller: a client that lost its state) kill every
// process listed in it (cgroup.kill on v2 where the kernel has it) and
// remove it. Exec sessions of a re-attached task reach the init's exec
// server through a listening socket it was given at start (root's
// only, mode 0600, in the alloc dir; see execlisten_linux.go), since
// the control socket pair dies with the agent that started the task;
// without it ExecTask fails rather than run the command outside the
// task's isolation. An agent run by systemd needs KillMode=process, or the
// agent's stop kills the inits still in its unit's cgroup (v1's
// name=systemd hierarchy).
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
