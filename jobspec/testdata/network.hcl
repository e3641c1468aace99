# An inference service with a dynamic port, a static one, and Nomad's
# older task-level network in resources.
job "inference" {
  datacenters = ["dc1"]

  group "api" {
    count = 2

    network {
      mode = "host"
      port "http" {
        to = 8080
      }
      port "metrics" {
        static       = 9100
        host_network = "default"
      }
    }

    task "server" {
      driver = "docker"
      config {
        image = "vllm/vllm-openai:latest"
        ports = ["http"]
      }
      resources {
        cpu    = 500
        memory = 512
        network {
          mbits = 10
          port "admin" {}
        }
      }
    }
  }
}
