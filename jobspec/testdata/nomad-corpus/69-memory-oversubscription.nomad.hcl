job "batchy" {
  datacenters = ["dc1"]
  type        = "batch"

  group "work" {
    restart {
      attempts         = 2
      render_templates = false
    }

    task "crunch" {
      driver = "exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "echo crunching"]
      }

      logs {
        disabled = true
      }

      resources {
        cpu        = 500
        memory     = 256
        memory_max = 1024
      }
    }
  }
}
