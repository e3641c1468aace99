job "stack" {
  datacenters = ["dc1"]

  group "frontend" {
    count = 2

    network {
      port "http" {}
    }

    service {
      name     = "frontend"
      port     = "http"
      provider = "nomad"
    }

    task "ui" {
      driver = "docker"

      config {
        image = "example/ui:3"
        ports = ["http"]
      }
    }
  }

  group "backend" {
    count = 3

    network {
      port "grpc" {}
    }

    service {
      name     = "backend"
      port     = "grpc"
      provider = "nomad"
      tags     = ["grpc"]
    }

    task "api" {
      driver = "docker"

      config {
        image = "example/api:3"
        ports = ["grpc"]
      }
    }
  }
}
