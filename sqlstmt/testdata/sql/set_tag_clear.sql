SET spark.databricks.delta.commitInfo.userMetadata = ''
