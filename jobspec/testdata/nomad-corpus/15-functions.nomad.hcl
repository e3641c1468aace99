variable "regions" {
  type    = list(string)
  default = ["us-east", "us-west"]
}

locals {
  tags = join(",", [for r in var.regions : "region-${r}"])
}

job "functions" {
  type = "batch"

  meta {
    tags    = local.tags
    count   = length(var.regions)
    greeting = format("hello %s", title("nomad users"))
  }

  group "g" {
    task "t" {
      driver = "raw_exec"

      config {
        command = "/bin/echo"
        args    = split(",", local.tags)
      }
    }
  }
}
