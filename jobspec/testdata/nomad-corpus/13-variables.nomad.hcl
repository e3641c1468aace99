variable "datacenters" {
  description = "Datacenters to run in."
  type        = list(string)
  default     = ["dc1"]
}

variable "image" {
  type    = string
  default = "nginx:1.25"
}

variable "count" {
  type    = number
  default = 2

  validation {
    condition     = var.count > 0 && var.count <= 10
    error_message = "The count must be between 1 and 10."
  }
}

job "web-vars" {
  datacenters = var.datacenters

  group "web" {
    count = var.count

    task "web" {
      driver = "docker"

      config {
        image = var.image
      }
    }
  }
}
