job "web" {
  datacenters = ["dc1"]

  group "web" {
    service {
      name     = "web"
      port     = "8080"
      provider = "nomad"
      tags     = ["http", "v1"]
      task     = "server"

      check {
        type     = "http"
        path     = "/health"
        interval = "5s"
        timeout  = "1s"
        header {
          X-Probe = ["drover"]
        }
        check_restart {
          limit = 3
          grace = "10s"
        }
      }

      check {
        name     = "script"
        type     = "script"
        command  = "/bin/true"
        task     = "server"
        interval = "30s"
        timeout  = "5s"
      }
    }

    task "server" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["3600"]
      }

      service {
        name = "admin"
        port = 9090
        check {
          type     = "tcp"
          interval = "10s"
          timeout  = "2s"
        }
      }
    }
  }
}
