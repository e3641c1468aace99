# want: Vault
job "vault-job" {
  datacenters = ["dc1"]

  vault {
    policies    = ["db"]
    change_mode = "restart"
  }

  group "g" {
    task "t" {
      driver = "docker"

      config {
        image = "example/app:1"
      }
    }
  }
}
