job "email-sender" {
  type = "batch"

  parameterized {
    payload       = "forbidden"
    meta_required = ["to"]
  }

  group "send" {
    task "send" {
      driver = "exec"

      config {
        command = "/usr/bin/send-mail"
        args    = ["${NOMAD_META_to}"]
      }
    }
  }
}
