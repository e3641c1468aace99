job "web" {
  datacenters = ["dc1"]
  type        = "service"

  update {
    max_parallel = 1
    auto_revert  = true
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
