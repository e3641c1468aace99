job "render" {
  datacenters = ["dc1"]
  type        = "batch"

  parameterized {
    payload       = "required"
    meta_required = ["scene"]
    meta_optional = ["quality"]
  }

  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/cat"
        args    = ["local/input.json"]
      }
      dispatch_payload {
        file = "input.json"
      }
    }
  }
}
