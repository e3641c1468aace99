suffix = "from-file"
