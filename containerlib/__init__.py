"""The container library"""
