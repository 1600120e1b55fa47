DELETE FROM `main`.`sa``les`.`or ders` WHERE _metadata.row_id BETWEEN 0 AND 99 OR _metadata.row_id = 250 OR _metadata.row_id BETWEEN 300 AND 419
