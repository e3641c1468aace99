# A task's user: exec and raw_exec run a task without one as nobody; a
# client refuses a user in its user.denylist (root by default).
job "user" {
  datacenters = ["dc1"]
  type        = "batch"

  group "g" {
    task "as-alice" {
      driver = "exec"
      user   = "alice"
      config {
        command = "/usr/bin/id"
      }
    }
    task "default" {
      driver = "raw_exec"
      config {
        command = "/usr/bin/id"
      }
    }
  }
}
