SELECT g, k0, k1 FROM read_files('/Volumes/main/sales/staging/run1/_zbrecover/keys/run-x\\[1\\].parquet', format => 'parquet')
