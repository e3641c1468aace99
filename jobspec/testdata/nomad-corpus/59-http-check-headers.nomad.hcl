job "checked" {
  datacenters = ["dc1"]

  group "g" {
    network {
      port "http" {}
    }

    service {
      name     = "checked"
      port     = "http"
      provider = "nomad"

      check {
        type     = "http"
        method   = "POST"
        path     = "/healthz?verbose=1"
        interval = "5s"
        timeout  = "1s"

        header {
          Authorization = ["Bearer health-token"]
        }
      }
    }

    task "t" {
      driver = "docker"

      config {
        image = "example/checked:1"
        ports = ["http"]
      }
    }
  }
}
