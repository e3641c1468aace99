job "tagged" {
  datacenters = ["dc1"]

  update {
    canary       = 1
    max_parallel = 1
  }

  group "g" {
    count = 2

    network {
      port "http" {}
    }

    service {
      name        = "tagged"
      port        = "http"
      provider    = "nomad"
      tags        = ["live"]
      canary_tags = ["canary"]

      meta {
        version = "2"
      }
    }

    task "t" {
      driver = "docker"

      config {
        image = "nginx:1.25"
        ports = ["http"]
      }
    }
  }
}
