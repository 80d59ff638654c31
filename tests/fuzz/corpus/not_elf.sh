#!/bin/sh
echo not an ELF file
