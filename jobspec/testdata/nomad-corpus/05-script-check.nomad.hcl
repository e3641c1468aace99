job "api" {
  datacenters = ["dc1"]

  group "api" {
    network {
      port "http" {}
    }

    task "api" {
      driver = "exec"

      config {
        command = "/usr/local/bin/api"
        args    = ["-port", "${NOMAD_PORT_http}"]
      }

      service {
        name     = "api"
        port     = "http"
        provider = "nomad"

        check {
          type     = "script"
          name     = "self-test"
          command  = "/usr/local/bin/api"
          args     = ["-check"]
          interval = "30s"
          timeout  = "5s"

          check_restart {
            limit = 3
            grace = "90s"
          }
        }
      }
    }
  }
}
