variable "port" {
  type    = number
  default = 9090
}

job "prom" {
  datacenters = ["dc1"]

  group "g" {
    network {
      port "ui" {
        static = var.port
      }
    }

    service {
      name     = "prometheus"
      port     = "ui"
      provider = "nomad"
    }

    task "prometheus" {
      driver = "docker"

      config {
        image = "prom/prometheus:v2.53.0"
        ports = ["ui"]
      }
    }
  }
}
