variable "api_key" {
  type      = string
  default   = "dev-only-key"
  sensitive = true
}

job "sensitive" {
  type = "batch"

  group "g" {
    task "t" {
      driver = "raw_exec"

      env {
        API_KEY = var.api_key
      }

      config {
        command = "/usr/bin/env"
      }
    }
  }
}
