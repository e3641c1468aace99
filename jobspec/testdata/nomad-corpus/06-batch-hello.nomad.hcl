job "hello" {
  type = "batch"

  group "hello" {
    task "hello" {
      driver = "raw_exec"

      config {
        command = "/bin/echo"
        args    = ["hello", "world"]
      }
    }
  }
}
