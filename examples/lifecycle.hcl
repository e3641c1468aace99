# Prestart, poststart sidecar, main and poststop tasks (README: Lifecycle tasks).
job "lifecycle" {
  datacenters = ["dc1"]
  type        = "batch"

  group "app" {
    task "migrate" {   # runs to a successful exit before the main task starts
      driver = "raw_exec"
      lifecycle {
        hook = "prestart"
      }
      config {
        command = "/bin/sh"
        args    = ["-c", "echo migrated > \"$NOMAD_ALLOC_DIR/data/schema\""]
      }
    }

    task "proxy" {     # starts once the main task runs, killed when it ends
      driver = "raw_exec"
      lifecycle {
        hook    = "poststart"
        sidecar = true
      }
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
    }

    task "main" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "cat \"$NOMAD_ALLOC_DIR/data/schema\"; sleep 2"]
      }
    }

    task "report" {    # runs once the others are dead, also after job stop
      driver = "raw_exec"
      lifecycle {
        hook = "poststop"
      }
      config {
        command = "/bin/echo"
        args    = ["done"]
      }
    }
  }
}
