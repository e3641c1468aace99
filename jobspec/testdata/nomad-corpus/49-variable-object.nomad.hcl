variable "resources" {
  type = object({
    cpu    = number
    memory = number
  })

  default = {
    cpu    = 500
    memory = 256
  }
}

variable "env" {
  type = map(string)
  default = {
    MODE  = "batch"
    DEBUG = "0"
  }
}

job "typed-vars" {
  type = "batch"

  group "g" {
    task "t" {
      driver = "raw_exec"
      env    = var.env

      config {
        command = "/usr/bin/env"
      }

      resources {
        cpu    = var.resources.cpu
        memory = var.resources.memory
      }
    }
  }
}
