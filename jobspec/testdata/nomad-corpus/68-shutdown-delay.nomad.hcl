job "api" {
  datacenters = ["dc1"]

  group "api" {
    shutdown_delay = "5s"

    task "api" {
      driver         = "docker"
      shutdown_delay = "2s"
      kill_timeout   = "20s"

      config {
        image = "hashicorp/http-echo"
        args  = ["-text", "hello"]
      }

      logs {
        max_files     = 3
        max_file_size = 5
      }
    }
  }
}
