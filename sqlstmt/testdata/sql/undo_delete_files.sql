DELETE FROM `main`.`sa``les`.`or ders` WHERE _metadata.file_path IN ('s3://lake/orders/part-00000-1a2b.c000.snappy.parquet', 's3://lake/orders/it\'s/part-1.parquet')
