# An artifact fetched before the task starts (README: Artifacts). The source
# here is the dev agent's own API, so that it runs offline.
job "fetch" {
  datacenters = ["dc1"]
  type        = "batch"

  group "fetch" {
    task "fetch" {
      driver = "raw_exec"
      artifact {
        source      = "http://127.0.0.1:4646/v1/status/leader"
        destination = "local/leader.json"
        mode        = "file"    # any (default) | file | dir
      }
      config {
        command = "/bin/cat"
        args    = ["local/leader.json"]
      }
    }
  }
}
