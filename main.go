// Command zbrecover recovers Databricks Zerobus Ingest fallback Parquet files into their Delta table.
package main

import (
	"os"

	"github.com/zbrecover/zbrecover/cmd"
)

func main() { os.Exit(cmd.Main()) }
