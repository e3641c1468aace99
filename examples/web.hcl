# A service with a dynamic port and an http check (README: Ports and services).
job "web" {
  datacenters = ["dc1"]

  group "web" {
    count = 2

    network {
      port "http" {}   # dynamic: a free host port from the client's range
    }

    service {
      name     = "web"
      port     = "http"
      provider = "nomad"
      tags     = ["http"]

      check {
        type     = "http"
        path     = "/"
        interval = "5s"
        timeout  = "2s"

        check_restart {
          limit = 3
          grace = "10s"
        }
      }
    }

    task "server" {
      driver = "raw_exec"
      config {
        command = "python3"
        args    = ["-m", "http.server", "${NOMAD_PORT_http}", "--bind", "${NOMAD_IP_http}"]
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
