job "node-exporter" {
  datacenters = ["*"]
  type        = "system"

  group "exporter" {
    network {
      port "metrics" {
        static = 9100
      }
    }

    task "node-exporter" {
      driver = "docker"

      config {
        image        = "prom/node-exporter:v1.8.1"
        ports        = ["metrics"]
        network_mode = "host"
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
