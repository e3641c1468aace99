job "web" {
  datacenters = ["dc1"]

  group "frontend" {
    count = 3

    network {
      port "http" {
        to = 80
      }
    }

    service {
      name     = "web"
      port     = "http"
      provider = "nomad"
      tags     = ["urlprefix-/", "frontend"]

      check {
        type     = "http"
        path     = "/"
        interval = "10s"
        timeout  = "2s"
      }
    }

    task "nginx" {
      driver = "docker"

      config {
        image = "nginx:1.25"
        ports = ["http"]
      }

      resources {
        cpu    = 200
        memory = 128
      }
    }
  }
}
