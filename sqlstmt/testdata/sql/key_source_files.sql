SELECT 'g\'1' AS g, CAST(`order id` AS BIGINT) AS k0, `re``gion` AS k1 FROM read_files('file:///f/{a\\,b.parquet,c\\{1\\}.parquet,d\\\\e.parquet}', format => 'parquet')
