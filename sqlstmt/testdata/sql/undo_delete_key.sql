DELETE FROM `main`.`sales`.`orders` WHERE `id` IN (SELECT k0 FROM read_files('/Volumes/main/sales/staging/run1/_zbrecover/keys/run-x\\[1\\].parquet', format => 'parquet') WHERE g = '12')
