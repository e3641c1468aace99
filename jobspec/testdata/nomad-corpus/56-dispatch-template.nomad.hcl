job "render-payload" {
  type = "batch"

  parameterized {
    payload = "optional"
  }

  group "g" {
    task "t" {
      driver = "raw_exec"

      dispatch_payload {
        file = "input.txt"
      }

      template {
        data        = "job={{ env \"NOMAD_JOB_ID\" }}"
        destination = "local/info.txt"
      }

      config {
        command = "/bin/cat"
        args    = ["local/input.txt", "local/info.txt"]
      }
    }
  }
}
