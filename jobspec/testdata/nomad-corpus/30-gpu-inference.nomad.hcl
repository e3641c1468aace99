job "inference" {
  datacenters = ["dc1"]

  group "model" {
    count = 2

    network {
      port "http" {
        to = 8000
      }
    }

    service {
      name     = "llm"
      port     = "http"
      provider = "nomad"

      check {
        type     = "http"
        path     = "/v1/models"
        interval = "15s"
        timeout  = "5s"
      }
    }

    task "vllm" {
      driver = "docker"

      config {
        image = "vllm/vllm-openai:v0.6.0"
        ports = ["http"]
        args  = ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--port", "8000"]
      }

      resources {
        cpu    = 4000
        memory = 32768

        device "nvidia/gpu" {
          count = 1

          constraint {
            attribute = "${device.attr.memory}"
            operator  = ">="
            value     = "40 GiB"
          }
        }
      }
    }
  }
}
