job "chatty" {
  datacenters = ["dc1"]

  group "g" {
    task "t" {
      driver = "raw_exec"

      config {
        command = "/usr/bin/yes"
      }

      logs {
        max_files     = 3
        max_file_size = 5
      }
    }
  }
}
