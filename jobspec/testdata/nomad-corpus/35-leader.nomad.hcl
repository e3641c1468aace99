job "leader-task" {
  type = "batch"

  group "g" {
    task "main" {
      leader = true
      driver = "raw_exec"

      config {
        command = "/bin/sleep"
        args    = ["5"]
      }
    }

    task "helper" {
      driver = "raw_exec"

      config {
        command = "/bin/sleep"
        args    = ["3600"]
      }
    }
  }
}
