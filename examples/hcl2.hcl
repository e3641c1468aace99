# HCL2 variables, locals, functions and runtime interpolation
# (README: Variables, locals and functions).
variable "greeting" {
  type = string
  validation {
    condition     = length(var.greeting) > 1
    error_message = "greeting must have at least 2 characters."
  }
}

variable "suffix" {
  type    = string
  default = "from-default"
}

variable "replicas" {
  type    = number
  default = 1
}

locals {
  msg = "${upper(var.greeting)}-${var.suffix}-${var.replicas * 2}"
}

job "hcl2" {
  type = "batch"   # no datacenters: Nomad's default ["*"]
  meta {
    x = "job-meta"
  }

  group "g" {
    count = var.replicas
    task "echo" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo MSG=${local.msg} NODE=${node.unique.name} META=${NOMAD_META_x} KERNEL=${attr.kernel.name}"]
      }
    }
  }
}
