# The smaller job file settings in one service job (README: Other job settings).
job "options" {
  datacenters = ["dc1"]

  ui {
    description = "Shown by drover job status"
    link {
      label = "Runbook"
      url   = "https://example.com/runbook"
    }
  }

  migrate {             # stored for node drain; a group's block overrides it
    max_parallel     = 1
    health_check     = "task_states"
    min_healthy_time = "10s"
    healthy_deadline = "5m"
  }

  group "api" {
    count          = 1
    shutdown_delay = "2s"   # waited before the kill signal (the task's own adds to it)

    scaling {               # bounds job scale; policies for an external autoscaler
      min = 1
      max = 5
      policy {
        cooldown = "20s"
      }
    }

    ephemeral_disk {
      size   = 200          # MB counted against the node's disk
      sticky = true         # an update on the same node keeps alloc/data
    }

    disconnect {
      lost_after = "10m"    # a node gone this long: its allocations are lost
      replace    = true
      reconcile  = "best_score"
    }

    task "api" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["3600"]
      }
      logs {
        disabled = true     # no stdout/stderr files kept
      }
      resources {
        cpu        = 100
        memory     = 64     # what the scheduler counts
        memory_max = 256    # the hard limit (docker, exec)
      }
    }
  }
}
