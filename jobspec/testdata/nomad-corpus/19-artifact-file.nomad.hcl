job "config-artifact" {
  type = "batch"

  group "g" {
    task "t" {
      driver = "raw_exec"

      artifact {
        source      = "https://example.com/configs/settings.yaml"
        destination = "local/settings.yaml"
        mode        = "file"
      }

      config {
        command = "/bin/cat"
        args    = ["local/settings.yaml"]
      }
    }
  }
}
