variable "image" {
  type        = string
  default     = "python:3.12"
  description = "Container image"
}

variable "replicas" {
  type    = number
  default = 2

  validation {
    condition     = var.replicas > 0
    error_message = "replicas must be positive."
  }
  validation {
    condition     = var.replicas <= 10
    error_message = "at most 10 replicas."
  }
}

variable "ports" {
  type    = list(number)
  default = [8080, 8081]
}

variables {
  region_dc = "dc"
}

locals {
  name   = "${local.prefix}-web"
  labels = { app = local.name, tier = upper("front") }
}

locals {
  prefix = "inference"
  args   = concat(["--port", tostring(var.ports[0])], [for p in var.ports : "--extra=${p}"])
}

job "vars" {
  datacenters = ["${var.region_dc}*"]

  group "web" {
    count = var.replicas

    task "server" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = local.args
        script  = "echo ${local.name} on ${node.unique.name} in ${attr.kernel.name} ${env["HOME"]}"
        image   = var.image
        hash    = substr(sha256(var.image), 0, 8)
        joined  = join(",", [for k, v in local.labels : "${k}=${v}"])
        mixed   = "${var.image}@${NOMAD_ALLOC_ID}:${meta.rack}"
      }

      env {
        NAME   = local.name
        RUNTIME = "${NOMAD_META_x}-${node.datacenter}"
        NUM     = "${var.replicas * 2}"
      }

      meta = local.labels
    }
  }
}
