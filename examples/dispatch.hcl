# A parameterized batch job (README: Parameterized jobs and dispatch).
job "render" {
  datacenters = ["dc1"]
  type        = "batch"

  parameterized {
    payload       = "optional"   # optional (default), required or forbidden
    meta_required = ["scene"]
    meta_optional = ["quality"]
  }

  group "render" {
    task "render" {
      driver = "raw_exec"
      dispatch_payload {
        file = "input.json"   # written to the task's local/input.json
      }
      config {
        command = "/bin/sh"
        args    = ["-c", "echo scene=$NOMAD_META_scene quality=${NOMAD_META_quality}; cat local/input.json 2>/dev/null || echo no payload"]
      }
    }
  }
}
