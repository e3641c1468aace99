# Task logs blocks: one sets both limits, one only max_files (the size
# keeps its default of 10 MB), and a task without a block has none (null:
# the client applies the defaults, 10 files of 10 MB).
job "logs" {
  datacenters = ["dc1"]
  type        = "batch"

  group "g" {
    task "both" {
      driver = "raw_exec"
      config {
        command = "/bin/echo"
      }
      logs {
        max_files     = 3
        max_file_size = 5
      }
    }
    task "files-only" {
      driver = "raw_exec"
      config {
        command = "/bin/echo"
      }
      logs {
        max_files = 2
      }
    }
    task "none" {
      driver = "raw_exec"
      config {
        command = "/bin/echo"
      }
    }
  }
}
