job "web" {
  datacenters = ["dc1"]
  type        = "service"

  update {
    max_parallel = 1
    health_check = "manual"
  }

  group "web" {
    task "web" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["60"]
      }
    }
  }
}
