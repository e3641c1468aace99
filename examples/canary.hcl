# A service rolled out through a canary (README: Deployments and canaries).
# Run it once, then again with -var version=2: one canary of version 2 starts
# beside the two old allocations and waits for `drover deployment promote`.
variable "version" {
  type    = string
  default = "1"
}

job "api" {
  datacenters = ["dc1"]
  type        = "service"

  group "api" {
    count = 2

    update {
      max_parallel      = 1
      canary            = 1
      auto_promote      = false
      auto_revert       = true
      health_check      = "task_states"
      min_healthy_time  = "3s"
      healthy_deadline  = "1m"
      progress_deadline = "5m"
    }

    task "api" {
      driver = "raw_exec"
      env {
        APP_VERSION = var.version
      }
      config {
        command = "/bin/sh"
        args    = ["-c", "echo version $APP_VERSION; exec sleep 3600"]
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
