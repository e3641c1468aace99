job "delims" {
  datacenters = ["dc1"]

  group "g" {
    task "t" {
      driver = "exec"

      config {
        command = "/usr/local/bin/app"
        args    = ["-config", "local/app.tmpl.out"]
      }

      template {
        data            = "name = [[ env \"NOMAD_JOB_NAME\" ]] {{ not a template }}"
        destination     = "local/app.tmpl.out"
        left_delimiter  = "[["
        right_delimiter = "]]"
        perms           = "0640"
        change_mode     = "noop"
      }
    }
  }
}
