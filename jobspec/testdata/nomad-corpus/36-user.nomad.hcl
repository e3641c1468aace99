job "as-user" {
  type = "batch"

  group "g" {
    task "t" {
      driver = "exec"
      user   = "nobody"

      config {
        command = "/usr/bin/id"
      }
    }
  }
}
